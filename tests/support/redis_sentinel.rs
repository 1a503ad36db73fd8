//! A Redis deployment under Sentinel: a primary, a replica of it and three Sentinels
//! (quorum 2) watching them with short timeouts, each a real process on free ports, so that
//! a test can kill the primary and watch the replica take over.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::redis_server::{RedisServer, free_port, redis_cli, require, wait_until};

/// The service name the Sentinels know the primary by.
pub const SERVICE: &str = "linkd-primary";

/// How long the Sentinels wait before they consider an unanswering primary down.
const DOWN_AFTER_MS: u64 = 1000;

struct Sentinel {
    port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Sentinel {
    fn start(primary_port: u16) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..5 {
            let port = free_port();
            let config = dir.path().join("sentinel.conf");
            std::fs::write(
                &config,
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {dir}\nlogfile {dir}/sentinel.log\n\
                     sentinel monitor {SERVICE} 127.0.0.1 {primary_port} 2\n\
                     sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n\
                     sentinel failover-timeout {SERVICE} 4000\n\
                     sentinel parallel-syncs {SERVICE} 1\n",
                    dir = dir.path().display()
                ),
            )
            .unwrap();
            let mut child = Command::new("redis-server")
                .arg(&config)
                .arg("--sentinel")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut started = false;
            for _ in 0..3000 {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                if redis_cli(port, &["PING"]).is_some_and(|answer| answer == "PONG") {
                    started = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if started {
                return Self {
                    port,
                    child,
                    _dir: dir,
                };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis sentinel did not start on any of 5 free ports");
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A primary, its replica and three Sentinels.
pub struct SentinelDeployment {
    primary: RedisServer,
    replica: RedisServer,
    sentinels: Vec<Sentinel>,
}

impl SentinelDeployment {
    /// Starts the primary, the replica (waiting until it is in sync) and the Sentinels
    /// (waiting until each knows the replica and the other Sentinels).
    pub fn start() -> Self {
        require("redis-server");
        let primary = RedisServer::start();
        let primary_port = primary.port().to_string();
        let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &primary_port]);
        wait_until("replica in sync", Duration::from_secs(30), || {
            replica
                .cli(&["INFO", "replication"])
                .is_some_and(|info| info.contains("master_link_status:up"))
        });
        let sentinels: Vec<Sentinel> = (0..3).map(|_| Sentinel::start(primary.port())).collect();
        for sentinel in &sentinels {
            wait_until(
                "sentinel knows the replica and its peers",
                Duration::from_secs(30),
                || {
                    redis_cli(sentinel.port, &["SENTINEL", "MASTER", SERVICE]).is_some_and(|info| {
                        let lines: Vec<&str> = info.lines().collect();
                        let field = |name: &str| {
                            lines
                                .iter()
                                .position(|line| *line == name)
                                .and_then(|at| lines.get(at + 1))
                                .map(|value| value.to_string())
                        };
                        field("num-slaves").as_deref() == Some("1")
                            && field("num-other-sentinels").as_deref() == Some("2")
                    })
                },
            );
        }
        Self {
            primary,
            replica,
            sentinels,
        }
    }

    /// `redis+sentinel://127.0.0.1:s1,127.0.0.1:s2,127.0.0.1:s3/SERVICE`.
    pub fn url(&self) -> String {
        let sentinels: Vec<String> = self
            .sentinels
            .iter()
            .map(|sentinel| format!("127.0.0.1:{}", sentinel.port))
            .collect();
        format!("redis+sentinel://{}/{SERVICE}", sentinels.join(","))
    }

    /// The primary the deployment started with.
    pub fn primary(&self) -> &RedisServer {
        &self.primary
    }

    /// The replica the deployment started with.
    pub fn replica(&self) -> &RedisServer {
        &self.replica
    }

    /// Kills the primary (SIGKILL), as a crash would.
    pub fn kill_primary(&mut self) {
        self.primary.stop();
    }

    /// Asks the Sentinels for a failover while the primary runs: it is demoted to a replica
    /// of the one promoted, and answers writes with `READONLY` once it is.
    pub fn switch_over(&self) {
        let answer = redis_cli(self.sentinels[0].port, &["SENTINEL", "FAILOVER", SERVICE]);
        assert_eq!(answer.as_deref(), Some("OK"), "SENTINEL FAILOVER");
    }

    /// Waits until the Sentinels name the replica as the primary.
    pub fn wait_for_failover(&self, deadline: Duration) {
        let replica = format!("127.0.0.1\n{}", self.replica.port());
        wait_until("sentinels promote the replica", deadline, || {
            redis_cli(
                self.sentinels[0].port,
                &["SENTINEL", "get-master-addr-by-name", SERVICE],
            )
            .is_some_and(|address| address == replica)
        });
    }
}
