//! The deployment artifacts in `deploy/`, each run or checked by the tool made for it: the
//! container image is assembled and run with podman, the compose file is checked against
//! the Compose Specification's schema, the Kubernetes manifests against Kubernetes' own
//! schemas, the systemd unit by `systemd-analyze`, and HAProxy's configurations by HAProxy,
//! which also serves a request through to a real linkd.
//!
//! scripts/test installs every tool (Debian's podman, runc, haproxy and systemd; the
//! validators pinned in deploy/requirements.txt into a virtual environment). A missing
//! tool fails its test with the command that installs it: nothing is skipped.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;

use crate::support::haproxy::{
    self, Running, assert_success, deploy_file, keys_dir, read_deploy_file, run, substitute, text,
    tool, write,
};
use crate::support::https;
use crate::support::linkd::eventually;

const LINKD: &str = env!("CARGO_BIN_EXE_linkd");
const REPOSITORY: &str = env!("CARGO_MANIFEST_DIR");
/// The uid the image runs linkd as (the Containerfile's distroless "nonroot", and the
/// assemble script's `linkd` user).
const IMAGE_UID: u32 = 65532;

/// A program from the virtual environment of deploy/requirements.txt.
fn validator(program: &str) -> PathBuf {
    let venv = std::env::var_os("LINKD_DEPLOY_VENV").map_or_else(
        || Path::new(REPOSITORY).join("target/deploy-venv"),
        PathBuf::from,
    );
    let path = venv.join("bin").join(program);
    assert!(
        path.is_file(),
        "{} is missing: scripts/test installs deploy/requirements.txt into {} \
         (python3 -m venv {0}; {0}/bin/pip install --require-hashes -r deploy/requirements.txt)",
        path.display(),
        venv.display()
    );
    path
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0")
}

/// Gives `path` and everything under it to `uid`.
fn chown_tree(path: &Path, uid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(uid)).unwrap();
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            chown_tree(&entry.unwrap().path(), uid);
        }
    }
}

/// Removes the test's container and image whatever happens to the test.
struct ContainerCleanup {
    podman: PathBuf,
    container: String,
    image: String,
}

impl Drop for ContainerCleanup {
    fn drop(&mut self) {
        let _ = Command::new(&self.podman)
            .args(["rm", "--force", "--time", "0", &self.container])
            .output();
        let _ = Command::new(&self.podman)
            .args(["rmi", "--force", &self.image])
            .output();
    }
}

#[tokio::test]
async fn assembled_image_serves_healthz_over_tls_as_a_non_root_user() {
    if !is_root() {
        // The image's user must own the mounted keys, which only root can arrange here.
        eprintln!("skipped: the container test needs root (scripts/test runs as root in CI)");
        return;
    }
    let podman = tool("podman", "apt-get install podman runc");
    tool("runc", "apt-get install runc");
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_dir(dir.path());
    let store = dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    chown_tree(&keys, IMAGE_UID);
    chown_tree(&store, IMAGE_UID);

    let name = format!("linkd-deploy-test-{}", std::process::id());
    let image = format!("localhost/{name}:latest");
    let cleanup = ContainerCleanup {
        podman: podman.clone(),
        container: name.clone(),
        image: image.clone(),
    };
    let output = run(Command::new(deploy_file("container/assemble"))
        .args(["--binary", LINKD, "--tag", &image, "--runtime"])
        .arg(&podman));
    assert_success("deploy/container/assemble", &output);

    let port = free_port();
    let output = run(Command::new(&podman)
        // crun (Debian 12) refuses hosts with both cgroup versions mounted; runc does not.
        .args(["--runtime", "runc", "run", "--detach", "--name", &name])
        // Host networking keeps the test's traffic on loopback.
        .args(["--network", "host", "--read-only"])
        // The container may not raise limits above the test's own (no CAP_SYS_RESOURCE
        // in every sandbox), and podman's defaults are higher.
        .args([
            "--ulimit",
            "nofile=4096:4096",
            "--ulimit",
            "nproc=4096:4096",
        ])
        .arg("--volume")
        .arg(format!("{}:/var/lib/linkd", store.display()))
        .arg("--volume")
        .arg(format!("{}:/keys:ro", keys.display()))
        .arg(&image)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--tls-cert", "/keys/tls.crt", "--tls-key", "/keys/tls.key"])
        // A short drain and grace period bound the stop below podman's timeout, whatever
        // connection another part of the test run leaves open.
        .args(["--drain-delay-secs", "1", "--shutdown-grace-secs", "5"]));
    assert_success("podman run", &output);

    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let logs = || text(&run(Command::new(&podman).args(["logs", &name])).stderr);
    eventually(
        Duration::from_secs(60),
        "linkd in the container",
        || async { tokio::net::TcpStream::connect(address).await.ok() },
    )
    .await;
    let reply = https::get(address, &keys.join("tls.crt"), "/healthz").await;
    assert_eq!(reply.status, 200, "{}", logs());
    let reply = https::get(address, &keys.join("tls.crt"), "/readyz").await;
    assert_eq!(reply.status, 200, "{}", logs());

    let output = run(Command::new(&podman).args(["inspect", "--format", "{{.State.Pid}}", &name]));
    assert_success("podman inspect", &output);
    let pid = text(&output.stdout).trim().to_owned();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uids: Vec<u32> = status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .unwrap()
        .split_whitespace()
        .map(|uid| uid.parse().unwrap())
        .collect();
    assert_eq!(
        uids, [IMAGE_UID; 4],
        "real, effective, saved and filesystem uid"
    );

    // SIGTERM drains and exits 0, as the orchestrators expect.
    let output = run(Command::new(&podman).args(["stop", "--time", "30", &name]));
    assert_success("podman stop", &output);
    let output =
        run(Command::new(&podman).args(["inspect", "--format", "{{.State.ExitCode}}", &name]));
    assert_eq!(text(&output.stdout).trim(), "0", "{}", logs());
    drop(cleanup);
}

/// The YAML documents of a file as JSON, read by the validators' own YAML library.
fn yaml_documents(path: &Path) -> Vec<serde_json::Value> {
    let output = run(Command::new(validator("python"))
        .arg("-c")
        .arg("import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))")
        .arg(path));
    assert_success("reading YAML", &output);
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn compose_file_follows_the_compose_specification() {
    let check = validator("check-jsonschema");
    let compose = deploy_file("compose.yaml");
    let output = run(Command::new(&check)
        .args(["--builtin-schema", "vendor.compose-spec"])
        .arg(&compose));
    assert_success("check-jsonschema deploy/compose.yaml", &output);

    // The validator does reject what the specification forbids.
    let dir = tempfile::tempdir().unwrap();
    let broken = write(
        dir.path(),
        "compose.yaml",
        &substitute(
            &read_deploy_file("compose.yaml"),
            "  read_only: true",
            "  read_only: true\n  readonly_root: true",
        ),
    );
    let output = run(Command::new(&check)
        .args(["--builtin-schema", "vendor.compose-spec"])
        .arg(&broken));
    assert!(!output.status.success(), "{}", text(&output.stdout));

    let file = &yaml_documents(&compose)[0];
    let services = file["services"].as_object().unwrap();
    let balancer = file["services"]["haproxy"]["networks"]["backend"]["ipv4_address"]
        .as_str()
        .unwrap();
    for name in ["linkd1", "linkd2", "linkd3"] {
        let command: Vec<&str> = services[name]["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|argument| argument.as_str().unwrap())
            .collect();
        let trusted = command
            .iter()
            .position(|argument| *argument == "--trusted-proxies");
        assert_eq!(
            trusted.map(|index| command[index + 1]),
            Some(balancer),
            "{name} trusts X-Forwarded-For from the balancer only"
        );
        assert!(command.contains(&"--plain-http"));
        assert_eq!(services[name]["volumes"][0], "./keys:/keys:ro");
        assert_eq!(services[name]["user"], IMAGE_UID.to_string() + ":65532");
    }
    for mounted in ["./haproxy/termination.cfg", "./redis.conf"] {
        assert!(deploy_file(mounted).is_file(), "{mounted}");
    }
}

#[test]
fn kubernetes_manifests_follow_the_kubernetes_schemas() {
    let validate = validator("kubernetes-validate");
    let manifests = [
        "deployment.yaml",
        "service.yaml",
        "poddisruptionbudget.yaml",
        "key-rotation-rbac.yaml",
        "key-rotation-job.yaml",
    ];
    let output = run(Command::new(&validate)
        .arg("--strict")
        .args(manifests.map(|name| deploy_file(&format!("kubernetes/{name}")))));
    assert_success("kubernetes-validate", &output);
    assert_eq!(
        text(&output.stdout)
            .matches(" passed for resource ")
            .count(),
        7,
        "every resource was validated:\n{}",
        text(&output.stdout)
    );

    // --strict rejects a field Kubernetes does not know.
    let dir = tempfile::tempdir().unwrap();
    let broken = write(
        dir.path(),
        "deployment.yaml",
        &substitute(
            &read_deploy_file("kubernetes/deployment.yaml"),
            "  replicas: 3",
            "  replicas: 3\n  replica: 3",
        ),
    );
    let output = run(Command::new(&validate).arg("--strict").arg(&broken));
    assert!(!output.status.success(), "{}", text(&output.stdout));

    let deployment = &yaml_documents(&deploy_file("kubernetes/deployment.yaml"))[0];
    assert_eq!(deployment["spec"]["replicas"], 3);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let linkd = &pod["containers"][0];
    assert_eq!(linkd["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(linkd["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(linkd["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(linkd["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(linkd["securityContext"]["capabilities"]["drop"][0], "ALL");
    assert!(linkd["resources"]["limits"]["memory"].is_string());
    let env = linkd["env"].as_array().unwrap();
    let variable = |name: &str| {
        env.iter()
            .find(|variable| variable["name"] == name)
            .unwrap_or_else(|| panic!("{name} is set"))
    };
    assert_eq!(
        variable("LINKD_REDIS_PASSWORD")["valueFrom"]["secretKeyRef"]["name"],
        "linkd-redis"
    );
    assert!(
        variable("LINKD_STORE")["value"]
            .as_str()
            .unwrap()
            .contains("$(LINKD_REDIS_PASSWORD)")
    );
    // The pod is killed only after the load balancers stopped sending (preStop) and linkd
    // drained (its shutdown grace).
    let drain: u64 = variable("LINKD_SHUTDOWN_GRACE_SECS")["value"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let pre_stop = linkd["lifecycle"]["preStop"]["sleep"]["seconds"]
        .as_u64()
        .unwrap();
    let termination = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(
        pre_stop + drain < termination,
        "{pre_stop} s + {drain} s must fit in {termination} s"
    );
    let keys_mount = linkd["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|mount| mount["mountPath"] == "/keys")
        .unwrap();
    assert_eq!(keys_mount["readOnly"], true);
}

#[test]
fn systemd_unit_passes_systemd_analyze() {
    let analyze = tool("systemd-analyze", "apt-get install systemd");
    let dir = tempfile::tempdir().unwrap();
    // verify checks that ExecStart names an executable: this build's linkd stands in for
    // /usr/local/bin/linkd.
    let unit = substitute(
        &read_deploy_file("systemd/linkd.service"),
        "ExecStart=/usr/local/bin/linkd ",
        &format!("ExecStart={LINKD} "),
    );
    let path = write(dir.path(), "linkd.service", &unit);
    let output = run(Command::new(&analyze).arg("verify").arg(&path));
    assert_success("systemd-analyze verify", &output);
    // Unknown or misspelt settings are only warned about.
    assert_eq!(text(&output.stderr), "", "systemd-analyze verify warned");

    let broken = write(
        dir.path(),
        "broken.service",
        &substitute(&unit, "UMask=0077", "UMask=0077\nProtectSystm=strict"),
    );
    let output = run(Command::new(&analyze).arg("verify").arg(&broken));
    assert!(text(&output.stderr).contains("ProtectSystm"));

    let output = run(Command::new(&analyze)
        .args(["security", "--offline=yes", "--no-pager"])
        .arg(&path));
    assert_success("systemd-analyze security", &output);
    let report = text(&output.stdout);
    let exposure: f64 = report
        .lines()
        .find_map(|line| line.strip_prefix("→ Overall exposure level for linkd.service: "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no exposure level in:\n{report}"))
        .parse()
        .unwrap();
    // deploy/README.md quotes the level; 10 is fully exposed, below 2 is rated OK.
    assert!(exposure <= 1.5, "exposure {exposure}:\n{report}");

    assert!(unit.contains("\nExecReload=/bin/kill -HUP $MAINPID\n"));
    assert!(unit.contains("\nCapabilityBoundingSet=\n"));
}

#[test]
fn haproxy_configurations_are_valid() {
    let haproxy = tool("haproxy", "apt-get install haproxy");
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_dir(dir.path());
    let configs = [
        (
            "termination.cfg",
            [
                ("linkd1:8080", "127.0.0.1:18081"),
                ("linkd2:8080", "127.0.0.1:18082"),
                ("linkd3:8080", "127.0.0.1:18083"),
            ],
        ),
        (
            "passthrough.cfg",
            [
                ("linkd1:8443", "127.0.0.1:18441"),
                ("linkd2:8443", "127.0.0.1:18442"),
                ("linkd3:8443", "127.0.0.1:18443"),
            ],
        ),
    ];
    for (name, servers) in configs {
        let path = write(
            dir.path(),
            name,
            &haproxy::config(name, &keys, "127.0.0.1:18440", &servers),
        );
        // -dW: a warning is an error, too.
        let output = run(Command::new(&haproxy).args(["-c", "-dW", "-f"]).arg(&path));
        assert_success(&format!("haproxy -c -f {name}"), &output);
    }
}

#[tokio::test]
async fn haproxy_terminating_tls_forwards_the_client_address_to_linkd() {
    let haproxy = tool("haproxy", "apt-get install haproxy");
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_dir(dir.path());

    // HAProxy connects to linkd from 127.0.0.2, the only trusted proxy; clients connect to
    // HAProxy from 127.0.0.1. So linkd's peer is the balancer, and the client's address
    // can only come from the X-Forwarded-For HAProxy appended.
    let linkd_port = free_port();
    let linkd = Running::spawn(
        Command::new(LINKD)
            .arg("--store")
            .arg(dir.path().join("linkd.db"))
            .arg("--keys-dir")
            .arg(&keys)
            .args(["serve", "--listen", &format!("127.0.0.1:{linkd_port}")])
            .args(["--plain-http", "--trusted-proxies", "127.0.0.2"])
            .args(["--log-format", "json"]),
    );
    let backend = format!("127.0.0.1:{linkd_port} source 127.0.0.2");
    let balancer_port = free_port();
    let config = write(
        dir.path(),
        "termination.cfg",
        &haproxy::config(
            "termination.cfg",
            &keys,
            &format!("127.0.0.1:{balancer_port}"),
            &[
                ("linkd1:8080", &backend),
                ("linkd2:8080", &backend),
                ("linkd3:8080", &backend),
            ],
        ),
    );
    let balancer = Running::spawn(Command::new(&haproxy).arg("-db").arg("-f").arg(&config));

    let address = SocketAddr::from(([127, 0, 0, 1], balancer_port));
    let cert = keys.join("tls.crt");
    eventually(Duration::from_secs(30), "HAProxy listening", || async {
        tokio::net::TcpStream::connect(address).await.ok()
    })
    .await;
    // HAProxy answers 503 until a health check of /readyz succeeded.
    eventually(Duration::from_secs(30), "linkd ready behind HAProxy", || {
        let cert = cert.clone();
        async move { (https::get(address, &cert, "/healthz").await.status == 200).then_some(()) }
    })
    .await;

    // A client's own X-Forwarded-For is not believed: HAProxy's entry to its right names
    // an untrusted address, and linkd reads from the right.
    let request = https::request("POST", "/token")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("authorization", "Basic dW5rbm93bjp3cm9uZw==")
        .header("x-forwarded-for", "198.51.100.7")
        .body(Full::new(Bytes::from_static(
            b"grant_type=refresh_token&refresh_token=nothing",
        )))
        .unwrap();
    let reply = https::send(
        address,
        https::client_config(&cert, https::Offer::Both),
        request,
    )
    .await;
    assert!((400..500).contains(&reply.status), "{}", reply.text());

    let event = eventually(
        Duration::from_secs(10),
        "linkd logging the failed client authentication",
        || {
            let found = linkd.log().into_iter().find_map(|line| {
                serde_json::from_str::<serde_json::Value>(&line)
                    .ok()
                    .filter(|event| event["message"] == "client authentication failed")
            });
            async move { found }
        },
    )
    .await;
    assert_eq!(
        event["source"],
        "127.0.0.1",
        "linkd: {:?}\nHAProxy: {:?}",
        linkd.log(),
        balancer.log()
    );
}
