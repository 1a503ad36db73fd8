//! Real `redis-server` processes for tests, on free ports (never 6379), each with its own
//! data directory, that a test can stop and restart on the same port; and Redis Clusters of
//! such servers.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A shared Redis may run on the default port; tests must never touch it.
const RESERVED_PORT: u16 = 6379;

/// How many fresh ports to try when another process takes the one we picked.
const PORT_ATTEMPTS: usize = 5;

/// How long a server may take to answer after it is spawned. Generous because CI machines
/// run many test binaries' servers at once on few cores.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// Where a server started in `dir` writes its log, quoted when it fails to start.
fn log_path(dir: &Path) -> std::path::PathBuf {
    dir.join("redis.log")
}

fn log_tail(dir: &Path) -> String {
    let log = std::fs::read_to_string(log_path(dir)).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// A free TCP port on 127.0.0.1, never the default Redis port.
pub fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if port != RESERVED_PORT {
            return port;
        }
    }
}

/// Fails the test with a hint when `binary` is not installed.
pub fn require(binary: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {binary}")])
        .output()
        .map(|output| output.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "{binary} is not installed: run ./scripts/test, which installs it, or apt-get install redis-server redis-tools"
    );
}

/// Runs `redis-cli` against 127.0.0.1:`port`; `None` when it fails.
pub fn redis_cli(port: u16, args: &[&str]) -> Option<String> {
    let output = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Waits until `ready`, failing the test after `deadline`.
pub fn wait_until(what: &str, deadline: Duration, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < deadline,
            "{what}: not ready within {deadline:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `redis-server` on `port` and waits until it answers. `None` when the server exits
/// first (typically: the port was taken in the meantime), so the caller can pick another.
fn spawn(port: u16, dir: &Path, extra: &[&str]) -> Option<Child> {
    let mut child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .args(["--dir", &dir.display().to_string()])
        .args(["--logfile", &log_path(dir).display().to_string()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run redis-server: {error}"));
    // The answer must come from our process, not from another server that owns the port.
    let ours = format!("process_id:{}", child.id());
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return None;
        }
        if redis_cli(port, &["INFO", "server"]).is_some_and(|info| info.contains(&ours)) {
            return Some(child);
        }
        if started.elapsed() > START_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "redis-server on port {port}: not answering within {START_DEADLINE:?}; its log:\n{}",
                log_tail(dir)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One Redis server.
pub struct RedisServer {
    port: u16,
    /// Arguments beyond the defaults, kept so a restart runs the same server.
    extra: Vec<String>,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server on a free port, with an empty data directory and no persistence.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts a server with extra `redis-server` arguments; `{port}` in `extra` stands for a
    /// second free port (the cluster bus).
    pub fn start_with(extra: &[&str]) -> Self {
        require("redis-server");
        require("redis-cli");
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port();
            let bus_port = free_port().to_string();
            let extra: Vec<String> = extra
                .iter()
                .map(|arg| arg.replace("{port}", &bus_port))
                .collect();
            let args: Vec<&str> = extra.iter().map(String::as_str).collect();
            if let Some(child) = spawn(port, dir.path(), &args) {
                return Self {
                    port,
                    extra,
                    dir,
                    child: Some(child),
                };
            }
        }
        panic!("redis-server did not start on any of {PORT_ATTEMPTS} free ports");
    }

    /// The TCP port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The `redis://` URL of the server.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server; its port stays reserved for [`RedisServer::restart`].
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (with empty data).
    pub fn restart(&mut self) {
        self.stop();
        let args: Vec<&str> = self.extra.iter().map(String::as_str).collect();
        let child = spawn(self.port, self.dir.path(), &args);
        self.child =
            Some(child.unwrap_or_else(|| panic!("redis-server: port {} was taken", self.port)));
    }

    /// Runs a `redis-cli` command against the server; `None` when it fails.
    pub fn cli(&self, args: &[&str]) -> Option<String> {
        redis_cli(self.port, args)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A Redis Cluster of masters without replicas.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts `masters` cluster-enabled servers, joins them into one cluster holding every
    /// slot, and waits until each node reports `cluster_state:ok`.
    pub fn start(masters: usize) -> Self {
        let nodes: Vec<RedisServer> = (0..masters)
            .map(|_| {
                // An explicit bus port: the default (port + 10000) does not exist for the
                // upper part of the ephemeral range.
                RedisServer::start_with(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "2000",
                    "--cluster-port",
                    "{port}",
                ])
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .unwrap();
        assert!(
            created.status.success(),
            "redis-cli --cluster create failed:\n{}{}\nfirst node's log:\n{}",
            String::from_utf8_lossy(&created.stdout),
            String::from_utf8_lossy(&created.stderr),
            log_tail(nodes[0].dir.path())
        );
        for node in &nodes {
            wait_until("cluster_state:ok", START_DEADLINE, || {
                node.cli(&["CLUSTER", "INFO"])
                    .is_some_and(|info| info.contains("cluster_state:ok"))
            });
        }
        Self { nodes }
    }

    /// `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,…`, every node of the cluster.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// Runs a `redis-cli -c` command, which follows redirections to the node owning the key.
    pub fn cli(&self, args: &[&str]) -> Option<String> {
        let mut with_redirects = vec!["-c"];
        with_redirects.extend_from_slice(args);
        redis_cli(self.nodes[0].port, &with_redirects)
    }
}
